import scipy
def f(:
    pass
