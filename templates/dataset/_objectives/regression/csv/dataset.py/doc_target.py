the number to predict is `data.target` (default: the last column).
