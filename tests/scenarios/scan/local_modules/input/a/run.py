import helper
import utils.io
import jarvis
from . import sibling
