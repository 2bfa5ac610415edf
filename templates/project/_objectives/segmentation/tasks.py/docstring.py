the number of classes, their names (`state["classes"]`, saved by the dataset) and the mask
value of unlabelled pixels (`spec.ignore_index`), which neither the loss nor the metrics count.
