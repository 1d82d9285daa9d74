from click.testing import CliRunner

from reconciler.cli import COMMANDS, main


def test_help_lists_only_commands_that_exist() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "Declarative infrastructure-as-code" in result.output
    listed = {name for name in COMMANDS if f"  {name}" in result.output}
    for name in listed:
        assert CliRunner().invoke(main, [name, "--help"]).exit_code == 0


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["frobnicate"])
    assert result.exit_code == 1
    assert "No such command" in result.output
