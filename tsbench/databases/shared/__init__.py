"""What every database package may use (phases 2-5): the Target and Server protocols,
HTTP clients, server installs and the JVM, the support matrix, several servers behind
one target, and value verification's shared arithmetic."""
