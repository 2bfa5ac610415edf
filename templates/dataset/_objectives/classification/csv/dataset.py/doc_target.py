the class label is `data.target` (default: the last column).
