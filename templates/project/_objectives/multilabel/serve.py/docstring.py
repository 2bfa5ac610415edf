POST /predict answers with the records `predict` writes, one per input, in order. Inputs come
as JSON `{"inputs": [...]}` or, for files, as a multipart form.
