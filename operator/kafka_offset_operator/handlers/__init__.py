"""What the operator reacts to, one module per resource kind; each module's `register` adds its Kopf
handlers to a registry, and the work itself happens in reconcilers/."""
