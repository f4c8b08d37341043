import importlib
try:
    import torch
except ImportError:
    torch = None
try:
    import yaml
except (ValueError, ModuleNotFoundError):
    yaml = None
mod = importlib.import_module('xgboost')
x = __import__('cv2')
from google.protobuf import message
import google.colab
