import os
import numpy as np
from jarvis.db.figshare import data
import sklearn.metrics

def f():
    import lightgbm as lgb
    return lgb

os.system('zip out.zip out.csv')
