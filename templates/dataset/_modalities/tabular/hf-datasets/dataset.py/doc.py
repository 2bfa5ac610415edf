
The target is the `data.label_column`; every other column is a feature, its kind from
its type: numbers are standardised with the training split's mean and std, text and
ClassLabel columns (by their names) one-hot encoded over the categories seen at least
twice in training (the `data.max_categories` most frequent), missing cells get a 0/1
indicator, columns of other types (images, lists) and those in `data.ignore` are left
out. The encoding is the csv kind's (`data/_tables.py`); the schema goes into
`bundle.state` (saved in checkpoints), so evaluation and `predict` (CSV or Parquet rows)
encode rows exactly as training did.
