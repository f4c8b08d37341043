#!/usr/bin/env python
# coding: utf-8

# In[1]:


get_ipython().system('pip install jarvis-tools')
!pip install lightgbm
import pandas as pd
%matplotlib inline
get_ipython().run_cell_magic('time', '', 'import lightgbm as lgb\nfrom sklearn.metrics import mean_absolute_error\n')
import tqdm
