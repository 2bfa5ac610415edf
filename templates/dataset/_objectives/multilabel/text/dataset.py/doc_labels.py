The label cell is a set of labels joined by `data.label_separator` ("sports|politics");
an empty cell is a text with none of them. The labels are those that occur in the
training split, sorted; a label only the validation or test split has is left out (with
a note), and training rows without any label at all are an error.
