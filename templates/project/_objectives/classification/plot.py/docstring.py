"""`python -m <package> plot`: loss and metric curves from metrics.csv, drawn to a PNG; and
the confusion matrix that `evaluate` draws."""
