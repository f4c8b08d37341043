import cPickle
import urllib2
import numpy
print 'hello'
