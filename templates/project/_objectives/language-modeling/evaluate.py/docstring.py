its data prepared with the state saved in the checkpoint, exactly as in training. The
loss is the mean cross-entropy in nats per token; perplexity is exp of it.
