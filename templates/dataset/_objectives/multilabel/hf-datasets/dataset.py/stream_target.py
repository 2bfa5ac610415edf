    return {"inputs": inputs, "targets": multi_hot(record[label], labels, len(set(labels.values())))}
