The class label is `data.target` (default: the last column). Nothing is loaded up front:
