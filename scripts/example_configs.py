"""Write every example config of the docs into a folder, for scripts/release-check.sh to check.

The examples are the files under docs/examples/, the ConfigMap's chatgate.toml in deploy/kubernetes/,
and every ```toml block in README.md and docs/*.md that is a whole config: it has agents, and each agent
names its model (the other blocks are fragments: one table or key, shown alone). A block's
``${file:...}`` files are written beside it with a line of text, and its ``${env:...}`` names get a
value in OUT/env (a URL for names ending in _URL, else a string long enough for a key), so the check
is of the config's shape, not of this machine. Prints one line per config: its file, a tab, where it
came from.

usage: python scripts/example_configs.py OUT
"""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).parent.parent
BLOCK = re.compile(r"^```toml\n(.*?)^```", re.MULTILINE | re.DOTALL)
FILE_REFERENCE = re.compile(r"\$\{file:([^}]+)\}")
ENV_REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def examples() -> list[tuple[str, str]]:
    """(label, text) of every example config."""
    files = sorted((ROOT / "docs" / "examples").rglob("*.toml"))
    found = [(str(path.relative_to(ROOT)), path.read_text()) for path in files]
    for manifest in yaml.safe_load_all((ROOT / "deploy" / "kubernetes" / "configmap.yaml").read_text()):
        found.append(("deploy/kubernetes/configmap.yaml's chatgate.toml", manifest["data"]["chatgate.toml"]))
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        for match in BLOCK.finditer(text):
            agents = tomllib.loads(match.group(1)).get("agents", {})
            if agents and all("model" in agent for agent in agents.values()):
                line = text.count("\n", 0, match.start()) + 1
                found.append((f"{page.relative_to(ROOT)}:{line}", match.group(1)))
    return found


def main(out: Path) -> None:
    """Write the configs, their files and OUT/env; print each config's file and label."""
    names: set[str] = set()
    for number, (label, text) in enumerate(examples()):
        folder = out / f"{number:02d}"
        folder.mkdir(parents=True)
        for reference in FILE_REFERENCE.findall(text):
            target = folder / reference
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("An example file for the release check.\n")
        names.update(ENV_REFERENCE.findall(text))
        (folder / "chatgate.toml").write_text(text)
        print(f"{folder / 'chatgate.toml'}\t{label}")
    values = {name: "http://127.0.0.1:9/v1" if name.endswith("_URL") else f"release-check-{name}" for name in names}
    values.update(OPENAI_API_KEY="sk-release-check", ANTHROPIC_API_KEY="sk-release-check")  # the built-in names
    values["CHATGATE_REDIS_URL"] = "redis://127.0.0.1:9/0"
    values["CHATGATE_STORE_URL"] = "sqlite:///release-check.db"
    (out / "env").write_text("".join(f"export {name}={shlex.quote(value)}\n" for name, value in sorted(values.items())))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
