import numpy
import scipy.optimize
