POST /generate answers with a prompt's continuation, drawn as `generate` draws it (the same
text for the same options and seed), at most MAX_SERVED_TOKENS new tokens, streamed as it
is drawn with `"stream": true`.
