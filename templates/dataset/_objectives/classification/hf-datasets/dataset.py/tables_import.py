from ._tables import (
    Table,
    category_counts,
    encode_splits,
    feature_names,
    fit_numeric,
    label_codes,
    table_rows,
    to_number,
)
