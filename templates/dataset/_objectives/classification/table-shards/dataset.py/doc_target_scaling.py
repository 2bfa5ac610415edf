The classes are the training split's target values, sorted; a validation row of another
class is an error.
