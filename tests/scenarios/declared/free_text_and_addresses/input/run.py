import numpy as np
import torch
from pymatgen.core import Structure
from rdkit import Chem
