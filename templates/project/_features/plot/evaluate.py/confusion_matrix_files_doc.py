The confusion matrix is also written as CSV (and PNG, with matplotlib).
