"""The test kit: one place for what many tests need (tests/README.md has the rules).

    agents       make_agent (an Agent for a test; scripted replies checked at teardown), routed
    hosts        ScriptedApprover (answers approval requests from a script, records them)
    events       of_type, results, jsonl, first_user_text
    calls        make_call (a ToolCallBlock with a fresh id)
    cli          run_cli (the CLI in this process), tether/popen (a real `tether` process), cli_env
    waits        wait_until / await_until (poll a condition; never sleep to let time pass)
    sandbox      sandbox_or_skip, sandbox_for, SANDBOX_KINDS, and the containment suite's helpers
    netguard     the socket guard behind the autouse "no network but loopback" fixture
    faultserver  a loopback OpenAI/Anthropic SSE server scripted per request (faults included)
    replay       recorded provider traffic served through a mocked httpx2 transport
    cases        the bug-report cases in tests/cases/
    sessions     turn builders and raw session-line helpers
    jobs         the Jobs tests' content-driven model, projects, task files, `tether jobs`
    zygote       real `tether` processes forked from a warmed interpreter (imports paid once)
    postgres     a private PostgreSQL server
    mcp          the demo MCP server over stdio or streamable HTTP
    tui          the TUI app over a scripted provider
    prompts      the embedded model's prompt cache shared by the whole test session
"""
