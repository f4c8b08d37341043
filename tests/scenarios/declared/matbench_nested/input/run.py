from matbench.bench import MatbenchBenchmark
from sklearn.ensemble import RandomForestRegressor

mb = MatbenchBenchmark(autoload=False)
