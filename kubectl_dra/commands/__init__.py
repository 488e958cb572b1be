"""What each command does once click has parsed its flags, in kubectl's order: validate against
what is read, gather the reads, run the core, build one result document, hand it to its printer,
return the exit status. ``cli/`` declares the commands (flags, help, usage checks) and imports a
module here only when the command runs, so ``--help`` and completion never load the core."""
