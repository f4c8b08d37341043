# An exported notebook (written for pyrepro's tests)
get_ipython().system('pip install matbench==0.1.0')
import numpy as np
from matbench.bench import MatbenchBenchmark
from sklearn.ensemble import RandomForestRegressor

mb = MatbenchBenchmark(autoload=False)
print(np.zeros(1), RandomForestRegressor)
