
The classes are the target values of the training split (sorted, numerically when they
are all numbers); a validation row of a class training never saw is an error.
