import sklearn
import matbench
