"""`casework mcp`: a Model Context Protocol server with which an agent asks a person to
review something and waits for the decision (docs/integrations.md, section "MCP")."""
