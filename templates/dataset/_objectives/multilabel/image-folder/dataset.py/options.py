    labels_file: str = option("labels.csv", "each image's labels: CSV file,labels or JSON {file: [labels]} (relative to root)")
    label_separator: str = option("|", "separates the labels of a CSV labels cell")
