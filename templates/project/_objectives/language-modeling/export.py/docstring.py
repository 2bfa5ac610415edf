extra; run it with onnxruntime). Both take any batch size and any number of tokens
from 1 to data.block_size (the model's positions end there). Beside the model,
FILE.json says what a consumer needs: the inputs (names, dtypes, shapes),
the vocabulary size and block size,
the tokeniser that turns text into the input's ids and back (bytes, or the BPE
tokeniser's JSON for Hugging Face `tokenizers`), and the torch and
