"""A skill as declared (``spec``, ``config``) and the sandbox that runs its code (``sandbox``,
``isolation``; the processes ``sandbox_init``, ``sandbox_child``, ``sandbox_seccomp``, which run
as scripts beside each other, never as modules of this package)."""
