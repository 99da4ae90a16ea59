"""`amago plugin new GROUP NAME`: writes a complete, installable plugin distribution to start from.

The files come from ``plugin_templates/`` (shipped inside the package): ``common/`` for every group (pyproject,
README, package ``__init__``), one folder per group for its spec, implementation and test. ``{{key}}`` in a
template (file contents only) is replaced by the value of ``key``; a template that names an unknown key is a
bug in amago and fails loudly. Template paths map to the plugin as ``package/X`` -> ``src/<package>/X`` and
``tests/test_component.py`` -> ``tests/test_<name>.py``. Torch-free: this runs from the CLI.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from importlib import metadata, resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated

import typer

from amago_core.cli.output import fail
from amago_core.plugins.groups import (
    AGENTS,
    ENV_SUITES,
    EXPLORATIONS,
    RELABELERS,
    TRAJ_ENCODERS,
    TSTEP_ENCODERS,
    ComponentGroup,
    cli_names_in_words,
    find_group,
)

TEMPLATE_SUFFIX = ".tmpl"
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
"""What a new component's name may be, after ``-`` became ``_``: ``ComponentSpec.name``'s rule, with words joined by
single underscores so that the distribution name (``amago-plugin-my-lstm``) is already in its normal form."""


class NewPluginError(ValueError):
    """The plugin cannot be written as asked; the message names the problem and what to do."""


@dataclass(frozen=True)
class GroupTemplate:
    """What differs between the plugins of one group.

    Attributes:
        group: the component group.
        dependencies: requirements of the package's own imports; ``amago-*`` ones get the installed version range.
        test_dependencies: extra requirements of the generated test (the ``test`` extra, with pytest).
        description: one sentence on what the generated component is.
        implementation: the implementation modules and what they hold, for the README.
        checks: what the generated test checks beyond the generic conformance checks, for the README.
        usage: shell lines that use the installed component (``{name}`` / ``{env_id}`` filled in).
    """

    group: ComponentGroup
    dependencies: tuple[str, ...]
    test_dependencies: tuple[str, ...]
    description: str
    implementation: str
    checks: str
    usage: str


GROUP_TEMPLATES: dict[str, GroupTemplate] = {
    t.group.cli_name: t
    for t in (
        GroupTemplate(
            group=TRAJ_ENCODERS,
            dependencies=("amago-core", "amago-nets", "numpy>=1.26", "pydantic>=2.7", "torch>=2.5"),
            test_dependencies=(),
            description="An LSTM trajectory encoder (the agent's memory) for amago.",
            implementation="`encoder.py`: the LSTM, a subclass of `amago_nets.base.TrajEncoder`",
            checks=(
                "and amago's trajectory-encoder behaviour checks: output shapes, gradients, causality, and that "
                "stepping rows whose episodes end at different steps gives the outputs of a full forward over "
                "each episode"
            ),
            usage="amago run --env tmaze-passive --traj-encoder {name} -o traj_encoder.d_hidden=128",
        ),
        GroupTemplate(
            group=TSTEP_ENCODERS,
            dependencies=("amago-core", "amago-nets", "gymnasium>=1.0", "pydantic>=2.7", "torch>=2.5"),
            test_dependencies=("numpy>=1.26",),
            description="A linear timestep encoder (one Linear layer over every observation key) for amago.",
            implementation="`encoder.py`: the network, a subclass of `amago_nets.base.TstepEncoder`",
            checks=(
                "and amago's timestep-encoder behaviour checks (output shapes, gradients, every timestep encoded "
                "on its own), also on an image plus vector observation"
            ),
            usage="amago run --env tmaze-passive --tstep-encoder {name} -o tstep_encoder.d_output=64",
        ),
        GroupTemplate(
            group=AGENTS,
            dependencies=("amago-agents", "amago-core", "pydantic>=2.7", "torch>=2.5"),
            test_dependencies=("gymnasium>=1.0", "numpy>=1.26"),
            description=(
                "amago's off-policy actor-critic (the built-in `agent`) with an R2D2-style burn-in: training "
                "windows that start mid-episode leave their first transitions out of the losses."
            ),
            implementation="`agent.py`: a subclass of the built-in `amago_agents.agent.Agent`",
            checks=(
                "that it builds with real encoders and computes a loss, and that windows starting mid-episode "
                "leave their burn-in out of both losses"
            ),
            usage="amago run --env tmaze-passive --agent {name} -o agent.burn_in=4",
        ),
        GroupTemplate(
            group=EXPLORATIONS,
            dependencies=("amago-core", "numpy>=1.26", "pydantic>=2.7"),
            test_dependencies=("gymnasium>=1.0",),
            description=(
                "Temporally-extended epsilon-greedy exploration (ez-greedy): random actions repeated for a few "
                "steps, for amago."
            ),
            implementation="`wrapper.py`: the wrapper around amago's `AMAGOEnv`",
            checks=(
                "that it builds around real envs (Discrete and Box actions), leaves the policy alone at "
                "epsilon 0, repeats random actions in stretches, and stores the executed action"
            ),
            usage="amago run --env tmaze-passive --exploration {name} -o exploration.epsilon=0.2",
        ),
        GroupTemplate(
            group=ENV_SUITES,
            dependencies=("amago-core", "gymnasium>=1.0", "numpy>=1.26", "pydantic>=2.7"),
            test_dependencies=(),
            description=(
                "A parity-memory env suite for amago: one random bit per step, then name the parity of them all."
            ),
            implementation=(
                "`env.py`: the gymnasium environment (numpy only); `suite.py`: the suite object whose "
                "`make_env(split)` returns an `AMAGOEnv`"
            ),
            checks=(
                "that the suite makes envs for every split, that only the right answer is rewarded, and that env "
                "ids, tasks and presets resolve"
            ),
            usage="amago list envs {name}\namago run --env {env_id}-short\namago run --env {env_id}-long -o env.length=24",
        ),
        GroupTemplate(
            group=RELABELERS,
            dependencies=("amago-core", "numpy>=1.26", "pydantic>=2.7"),
            test_dependencies=(),
            description=(
                "A relabeler that scales and clips rewards as training loads stored trajectories, for amago."
            ),
            implementation="`relabeler.py`: a subclass of `amago_core.data.dataset.Relabeler`",
            checks=(
                "that rewards are scaled then clipped, that what the policy reads (observations, previous rewards, "
                "actions) stays as stored, and that the replay buffer trains on relabeled rewards and keeps its files"
            ),
            usage="amago show relabelers {name}\namago run --env tmaze-passive -o replay.relabeler={name}",
        ),
    )
}
"""CLI group name -> its template; every group of `amago list` has one."""


@dataclass(frozen=True)
class PluginNames:
    """Every spelling of one plugin's name.

    Attributes:
        component: the registered name (``my_lstm``).
        distribution: the distribution and folder name (``amago-plugin-my-lstm``).
        package: the import package (``amago_plugin_my_lstm``).
        class_name: the prefix of its classes (``MyLstm``).
        spec_constant: the spec's module attribute (``MY_LSTM``).
        env_id: the name as users type it in env ids (``my-lstm``).
    """

    component: str
    distribution: str
    package: str
    class_name: str
    spec_constant: str
    env_id: str

    @classmethod
    def from_typed(cls, typed: str) -> PluginNames:
        """The names for what the user typed (``my-lstm`` and ``my_lstm`` are the same name).

        Raises:
            NewPluginError: it is not lowercase words (letters and digits) joined by ``_`` or ``-``, starting with a
                letter.
        """
        component = typed.strip().replace("-", "_")
        if not NAME_PATTERN.match(component):
            msg = (
                f"{typed!r} is not a component name: use lowercase letters and digits, words joined by one '_' "
                "(or '-'), starting with a letter, e.g. my_lstm."
            )
            raise NewPluginError(msg)
        return cls(
            component=component,
            distribution="amago-plugin-" + component.replace("_", "-"),
            package="amago_plugin_" + component,
            class_name="".join(part.capitalize() for part in component.split("_")),
            spec_constant=component.upper(),
            env_id=component.replace("_", "-"),
        )


def amago_requirement(distribution: str) -> str:
    """``amago-nets>=0.1,<0.2``: the installed amago-core's release series (amago's packages share versions)."""
    major, minor = (int(part) for part in metadata.version("amago-core").split(".")[:2])
    upper = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"
    return f"{distribution}>={major}.{minor},<{upper}"


def _requirements(requirements: tuple[str, ...]) -> list[str]:
    return [amago_requirement(r) if r.startswith("amago-") else r for r in requirements]


def _toml_list(items: list[str]) -> str:
    return "\n".join(f'    "{item}",' for item in items)


def render(template: str, values: dict[str, str], where: str) -> str:
    """``template`` with every ``{{key}}`` replaced by ``values[key]``.

    Raises:
        KeyError: the template names a key without a value (a bug in amago's templates).
    """

    def value_of(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            msg = f"template {where} names {{{{{key}}}}}, which has no value; known: {', '.join(sorted(values))}."
            raise KeyError(msg)
        return values[key]

    return PLACEHOLDER.sub(value_of, template)


def template_values(template: GroupTemplate, names: PluginNames) -> dict[str, str]:
    """What the ``{{key}}`` placeholders of ``template``'s files stand for."""
    test_requirements = ["pytest>=8", *_requirements(template.test_dependencies)]
    return {
        "name": names.component,
        "distribution": names.distribution,
        "package": names.package,
        "class_name": names.class_name,
        "spec_constant": names.spec_constant,
        "env_id": names.env_id,
        "group": template.group.cli_name,
        "entry_point_group": template.group.entry_point_group,
        "label": template.group.label,
        "description": template.description,
        "dependencies": _toml_list(_requirements(template.dependencies)),
        "test_dependencies": ", ".join(f'"{r}"' for r in test_requirements),
        "implementation": template.implementation,
        "checks": template.checks,
        "usage": template.usage.format(name=names.component, env_id=names.env_id),
    }


def _template_files(folder: Traversable, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    found = []
    for entry in folder.iterdir():
        if entry.is_dir():
            found.extend(_template_files(entry, (*prefix, entry.name)))
        elif entry.name.endswith(TEMPLATE_SUFFIX):
            found.append(((*prefix, entry.name.removesuffix(TEMPLATE_SUFFIX)), entry.read_text("utf-8")))
    return found


def _plugin_path(template_path: tuple[str, ...], names: PluginNames) -> Path:
    parts = list(template_path)
    if parts[0] == "package":
        parts[:1] = ["src", names.package]
    if parts == ["tests", "test_component.py"]:
        parts[-1] = f"test_{names.component}.py"
    return Path(*parts)


@dataclass(frozen=True)
class PluginRequest:
    """A validated ``amago plugin new GROUP NAME``.

    Attributes:
        group: the component group.
        names: the plugin's names.
    """

    group: ComponentGroup
    names: PluginNames

    @classmethod
    def parse(cls, group: str, typed_name: str) -> PluginRequest:
        """Checks the group (any spelling ``amago list`` takes) and the name.

        Raises:
            NewPluginError: the group is unknown or the name is not a component name.
        """
        try:
            component_group = find_group(group)
        except ValueError as exc:
            raise NewPluginError(str(exc)) from None
        return cls(component_group, PluginNames.from_typed(typed_name))

    def files(self) -> dict[Path, str]:
        """The plugin's files, by their path inside its folder."""
        template = GROUP_TEMPLATES[self.group.cli_name]
        values = template_values(template, self.names)
        root = resources.files("amago_tools").joinpath("plugin_templates")
        files = {}
        for folder in ("common", self.group.cli_name):
            for path, text in _template_files(root.joinpath(folder)):
                files[_plugin_path(path, self.names)] = render(text, values, "/".join((folder, *path)))
        return files

    def check_name_is_free(self, *, force: bool = False) -> None:
        """Refuses a name that an installed component of the group (or an alias) already has.

        With ``force``, a name held only by the distribution this would write (an installed copy of this very
        plugin) is allowed: regenerating it replaces that distribution when it is installed again.

        Raises:
            NewPluginError: the name is taken; the message names the distribution that has it.
        """
        from amago_core.plugins.discovery import normalize_distribution
        from amago_core.plugins.registry import normalize_name, registries

        registry = registries()[self.group]
        name = self.names.component
        owners = registry.records(name) + [r for r in registry.skipped() if normalize_name(r.name) == name]
        if not owners:
            return
        ours = all(normalize_distribution(r.distribution) == self.names.distribution for r in owners)
        if ours and force:
            return
        owner = owners[0]
        if ours:
            msg = (
                f"{self.group.cli_name} already has {name!r} from {owner.distribution} {owner.version}, the "
                "distribution this would write; pass --force to regenerate it, or pick another name."
            )
            raise NewPluginError(msg)
        taken = {*registry.names(), *(normalize_name(r.name) for r in registry.skipped())}
        candidates = [f"my_{name}"] + [f"{name}{n}" for n in range(2, 100)]
        free = next((c for c in candidates if c not in taken), f"my_{name}")
        msg = (
            f"{self.group.cli_name} already has {name!r} (from {owner.distribution} {owner.version}); pick "
            f"another name, e.g. {free}, so that both can be installed."
        )
        raise NewPluginError(msg)

    def write(self, parent: Path, *, force: bool = False) -> tuple[Path, list[Path]]:
        """Writes ``parent/amago-plugin-<name>/``.

        Args:
            parent: the folder to create the plugin's folder in (created if missing).
            force: write into an existing, non-empty plugin folder, replacing the files this command writes
                (other files stay).

        Returns:
            The plugin's folder and the files written, relative to it.

        Raises:
            NewPluginError: the name is taken or the folder is not usable; the message says what to do.
        """
        self.check_name_is_free(force=force)
        folder = parent / self.names.distribution
        if folder.exists() and not folder.is_dir():
            msg = f"{folder} exists and is not a folder; remove it or pass another --dir."
            raise NewPluginError(msg)
        if folder.is_dir() and any(folder.iterdir()) and not force:
            msg = f"{folder} already exists; pass --force to overwrite the files this command writes, or another --dir."
            raise NewPluginError(msg)
        files = self.files()
        for relative, text in sorted(files.items()):
            target = folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        return folder, sorted(files)


@dataclass(frozen=True)
class InstallEnvironment:
    """The Python environment amago runs from, as far as installing a plugin into it goes.

    Attributes:
        python: the interpreter (``sys.executable``).
        prefix: the environment's root (``sys.prefix``).
        is_venv: ``prefix`` is a virtual environment (it has an ``activate`` script to put it on PATH).
        has_pip: pip is importable in it; a uv-made venv has none, and a bare ``pip`` is then another Python's.
        uv: how to call uv (``uv`` when on PATH, else the ``UV`` path ``uv run`` sets), or None without uv.
        uv_project: the uv project whose ``.venv`` this is (it holds ``uv.lock``), or None. ``uv sync`` there
            removes whatever its lock does not list, so a plugin must be added to the project to stay.
    """

    python: Path
    prefix: Path
    is_venv: bool
    has_pip: bool
    uv: str | None
    uv_project: Path | None

    @classmethod
    def detect(cls) -> InstallEnvironment:
        """This interpreter's environment."""
        prefix = Path(sys.prefix)
        # `uv run` sets UV to its own path, which is the uv to name when there is none on PATH.
        uv_path = os.environ.get("UV")
        uv = "uv" if shutil.which("uv") else shlex.quote(uv_path) if uv_path else None
        root = prefix.parent
        is_project = (
            prefix.name == ".venv" and (root / "pyproject.toml").is_file() and (root / "uv.lock").is_file()
        )
        return cls(
            python=Path(sys.executable),
            prefix=prefix,
            is_venv=sys.prefix != sys.base_prefix,
            has_pip=importlib.util.find_spec("pip") is not None,
            uv=uv,
            uv_project=root if is_project else None,
        )


def _shown_path(path: Path, base: Path) -> str:
    """``path`` as typed from ``base``: relative below it (``./x``, which uv reads as a path), else absolute."""
    path, base = path.resolve(), base.resolve()
    return "./" + path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)


def _with_test_extra(path: str) -> str:
    """``"path[test]"``, quoted for a POSIX shell (the brackets would otherwise be a glob)."""
    spec = f"{path}[test]"
    return f'"{spec}"' if not any(c in spec for c in '"$`\\') else shlex.quote(spec)


def next_steps(
    folder: Path, request: PluginRequest, env: InstallEnvironment, cwd: Path | None = None
) -> list[str]:
    """The shell lines that install, test and list the plugin just written, for the environment amago runs in.

    Args:
        folder: the plugin's folder.
        request: what was written.
        env: the environment to install into.
        cwd: where the user types the lines (the current directory when None).

    Returns:
        Indented lines, each with a comment saying what it does.
    """
    cwd = Path.cwd() if cwd is None else cwd
    group, name = request.group.cli_name, request.names.component
    if env.uv is not None and env.uv_project is not None:
        # `uv pip install` would work until the next `uv sync`, which removes what uv.lock does not list: adding
        # the plugin to the project (a workspace member when it lies inside it) is what makes it stay.
        root = env.uv_project
        lines = (
            []
            if cwd.resolve() == root.resolve()
            else [(f"cd {shlex.quote(str(root))}", "the uv project amago runs from")]
        )
        where = shlex.quote(_shown_path(folder, root))
        lines += [
            (
                f"{env.uv} add --dev --editable {where} --extra test",
                "install it; recorded in pyproject.toml and uv.lock, so `uv sync` keeps it",
            ),
            (f"{env.uv} run pytest {where}", "amago's conformance checks on the component"),
            (f"{env.uv} run amago list {group}", f"{name} shows up with status ok"),
        ]
        return _aligned(lines)
    shown = _shown_path(folder, cwd)
    where, target = shlex.quote(shown), _with_test_extra(shown)
    lines = []
    if env.is_venv:
        # Once activated, `python`, `pytest` and `amago` are this environment's, whatever was on PATH before.
        activate = env.prefix / ("Scripts" if os.name == "nt" else "bin") / "activate"
        lines.append((f"source {shlex.quote(str(activate))}", "the environment amago runs from"))
        python = "python"
    else:
        python = shlex.quote(str(env.python))
    if env.has_pip:
        lines.append((f"{python} -m pip install -e {target}", "this environment's pip, not another Python's"))
    elif env.uv is not None:
        into = "" if env.is_venv else f" --python {python}"
        lines.append((f"{env.uv} pip install{into} -e {target}", "this environment has no pip of its own"))
    else:
        lines.append((f"{python} -m ensurepip --upgrade", "this environment has neither pip nor uv"))
        lines.append((f"{python} -m pip install -e {target}", "install it with that pip"))
    pytest = "pytest" if env.is_venv else f"{python} -m pytest"
    lines.append((f"{pytest} {where}", "amago's conformance checks on the component"))
    lines.append((f"amago list {group}", f"{name} shows up with status ok"))
    return _aligned(lines)


def _aligned(lines: list[tuple[str, str]]) -> list[str]:
    width = max(len(command) for command, _ in lines)
    return [f"  {command.ljust(width)}   # {comment}" for command, comment in lines]


app = typer.Typer(help="Start a plugin of your own.", no_args_is_help=True)


@app.command("new")
def new_command(
    group: Annotated[
        str,
        typer.Argument(metavar="GROUP", help=f"{cli_names_in_words()}."),
    ],
    name: Annotated[
        str,
        typer.Argument(metavar="NAME", help="The component's name, e.g. my_lstm (lowercase, '_' or '-')."),
    ],
    directory: Annotated[
        Path, typer.Option("--dir", help="Where to create the amago-plugin-NAME folder.")
    ] = Path("."),
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the generated files in an existing plugin folder.")
    ] = False,
) -> None:
    """Write amago-plugin-NAME/: a working component of GROUP with its pyproject, test and README, ready to
    install and test."""
    try:
        request = PluginRequest.parse(group, name)
        folder, written = request.write(directory, force=force)
    except NewPluginError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"could not write the plugin: {exc}; pass a --dir you can write to.")
    steps = next_steps(folder, request, InstallEnvironment.detect())
    typer.echo("\n".join([f"wrote {folder}/: {', '.join(str(p) for p in written)}", "next:", *steps]))
