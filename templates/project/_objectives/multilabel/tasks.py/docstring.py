the number of labels and their names (`state["classes"]`, saved by the dataset).
