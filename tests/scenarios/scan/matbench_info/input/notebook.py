import matbench
import sklearn
import modnet
import sko
