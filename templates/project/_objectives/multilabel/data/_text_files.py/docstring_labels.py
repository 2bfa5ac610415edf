(default: the first other column). A label cell is a set of labels joined by
`label_separator` ("sports|politics"); an empty cell is a text with none of them.
TSV text is taken as it is (a quote is a character,
