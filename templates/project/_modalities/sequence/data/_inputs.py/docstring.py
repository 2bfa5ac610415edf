texts become model inputs, from the options and the state saved in a checkpoint
