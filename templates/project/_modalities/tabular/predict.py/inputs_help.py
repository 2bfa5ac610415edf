        help="CSV files with a header naming the feature columns (a target column is ignored)",
