#!/usr/bin/env python
# coding: utf-8

# In[1]:


get_ipython().run_line_magic('pip', 'install lightgbm==3.3.5')
get_ipython().run_line_magic('matplotlib', 'inline')
get_ipython().run_line_magic('time', 'from pymatgen.core import Structure')


# In[2]:


import os
if os.environ.get("COLAB_GPU"):
    !pip install dgl
    %cd /content
try:
    import ujson as json
except ImportError:
    import simplejson as json
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    import pandas
try:
    import lightgbm as lgb
except ImportError as exc:
    raise SystemExit("pip install lightgbm") from exc


# In[3]:


import sys
sys.path.append("utils")
from featurize import make_features
out = get_ipython().getoutput('nvidia-smi -L')
os.system("train_folder.py --root_dir Out --config config.json")
os.system("zip preds.csv.zip preds.csv")
