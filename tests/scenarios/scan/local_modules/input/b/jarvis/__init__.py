# a folder elsewhere in the tree does not hide the real package
