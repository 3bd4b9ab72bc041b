"""The brain's world: the tool registry and its fixed-logic handlers.

registry      ToolSpec / ToolRegistry / ToolContext / ToolInputError (the entry model)
catalog       config/tools.json -> registry entries bound to code by handler name
builtin       HANDLERS (parameter model + handler per tool) and builtin_registry()
checklist     the seed §7.1b tool addition checklist, enforced
converter     registry -> Anthropic tool definitions (anthropic_tool_definitions)
cli           ``charter tools list [--json]`` / ``charter tools check``
handlers/     tasks, goals, memory and knowledge, organisation
normalize     Japanese dates and times, ids; directory: people and departments
execution     ToolExecutor: receipts, exactly-once effects, timeouts, dry runs
scoped        organisation-scoped, read-only views of the store
task_backend  the TaskBackend port and its store adapter; chatwork_api /
              chatwork_tasks: the ChatWork task API client and adapter
matching      keyword matching (memory, knowledge, task lookup)
"""
