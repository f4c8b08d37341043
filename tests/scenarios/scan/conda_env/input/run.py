import xgboost
import torch
import jarvis
import numpy
import matformer
