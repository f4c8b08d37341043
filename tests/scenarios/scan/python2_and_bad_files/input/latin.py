# -*- coding: latin-1 -*-
import pandas
s = 'é'
