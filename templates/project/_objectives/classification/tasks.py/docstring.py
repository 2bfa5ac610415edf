the number of classes and their names (`state["classes"]`, saved by the dataset).
