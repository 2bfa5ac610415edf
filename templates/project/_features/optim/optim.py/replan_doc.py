    steps per epoch changed): cosine decays to 0 at the new end, step drops every
    lr_step_epochs of the new epochs; onecycle's fixed phases refuse another length.
