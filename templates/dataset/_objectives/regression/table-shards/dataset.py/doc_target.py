The number to predict is `data.target` (default: the last column). Nothing is loaded up front:
