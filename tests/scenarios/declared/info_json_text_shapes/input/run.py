import lightgbm
import numpy
from matminer.featurizers.composition import ElementProperty
from sklearn.model_selection import KFold
