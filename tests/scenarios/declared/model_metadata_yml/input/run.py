import numpy
import pandas
from sklearn.linear_model import Ridge
import pkgx
