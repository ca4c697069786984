"""schedlog inside a real agent framework: a pydantic-ai agent with the session-local tools
(docs/agents.md#pydantic-ai).

The model is pydantic-ai's deterministic ``FunctionModel``, scripted below, so there is no
network and no model weights; the clock is virtual, so ten minutes pass at once. The agent gets
the tools as native pydantic-ai tools, built from ``schedlog tools catalog`` (the same names,
descriptions and JSON Schemas the MCP server serves), each calling ``SessionEngine.call``.

1. The user asks "remind me in 10 minutes to stretch"; the scripted model calls
   ``schedule_create`` and answers.
2. Ten virtual minutes pass; the live owner delivers the reminder into the session log.
3. The follow-up message becomes the agent's next user turn, with schedlog's fixed framing.

A real runtime passes a real model and ``SystemClock()``, and marks its turns on the session
(``begin_turn``/``end_turn``) as :func:`turn` does, so a reminder never interrupts a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from schedlog.rules.instants import parse_canonical_instant
from schedlog.runtime import FileSession, FollowupMessage, SessionEngine, VirtualClock
from schedlog.runtime.tool_schemas import tool_schemas

START = "2026-05-01T08:50:00.000Z"
ASK = "remind me in 10 minutes to stretch"


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: asked for a reminder, it calls schedule_create; given a tool result
    or a schedlog follow-up, it answers in words."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    part = last.parts[-1]
    if isinstance(part, UserPromptPart) and part.content == ASK:
        args = {"prompt": "Stretch your legs", "after_seconds": 600}
        return ModelResponse(parts=[ToolCallPart("schedule_create", args)])
    if isinstance(part, ToolReturnPart):
        return ModelResponse(parts=[TextPart(f"Done: {part.content['id']} is set.")])
    assert isinstance(part, UserPromptPart) and isinstance(part.content, str)
    prompt = part.content.rsplit("reminder_prompt_json: ", 1)[-1]
    return ModelResponse(parts=[TextPart(f"Reminder: {prompt}")])


def schedlog_tools(engine: SessionEngine) -> list[Tool[Any]]:
    """The session-local tools as pydantic-ai tools, schemas from the catalog."""

    def bind(name: str) -> Any:
        async def call(**args: Any) -> Any:
            return await engine.call(name, args)

        return call

    return [
        Tool.from_schema(bind(t["name"]), t["name"], t["description"], t["parameters"])
        for t in tool_schemas()["tools"]
    ]


@dataclass
class Conversation:
    """One chat: the agent, its message history, and the follow-ups schedlog delivers."""

    session: FileSession
    agent: Agent[None, str]
    history: list[ModelMessage] = field(default_factory=list)
    inbox: asyncio.Queue[FollowupMessage] = field(default_factory=asyncio.Queue)

    async def turn(self, user_text: str) -> str:
        """One agent run as a turn of the session (the owner waits while it runs)."""
        self.session.begin_turn()
        try:
            result = await self.agent.run(user_text, message_history=self.history)
        finally:
            self.session.end_turn()
        self.history = result.all_messages()
        return result.output


@contextlib.asynccontextmanager
async def conversation(log: Path, clock: VirtualClock) -> AsyncIterator[Conversation]:
    inbox: asyncio.Queue[FollowupMessage] = asyncio.Queue()
    session = FileSession(log, on_followup=inbox.put_nowait)
    try:
        async with SessionEngine(session, session, clock) as engine:
            agent = Agent(FunctionModel(script), tools=schedlog_tools(engine))
            yield Conversation(session, agent, inbox=inbox)
    finally:
        session.close()


async def main() -> None:
    start = parse_canonical_instant(START)
    assert start is not None
    clock = VirtualClock(start)
    with tempfile.TemporaryDirectory() as tmp:
        async with conversation(Path(tmp) / "chat-7.jsonl", clock) as chat:
            print("user:", ASK)
            print("agent:", await chat.turn(ASK))
            await clock.run_until(start + 10 * 60_000)  # ten virtual minutes pass
            followup = chat.inbox.get_nowait()
            print("user (schedlog follow-up):")
            print(followup.text)
            print("agent:", await chat.turn(followup.text))


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
