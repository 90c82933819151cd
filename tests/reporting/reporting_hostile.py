"""Hostile model text of the report tests (a module with its own name, so that importing it never
picks up another folder's ``conftest``)."""

HOSTILE_REPLY = ('<script>document.body.dataset.pwned = "script"</script>'
                 '"><img src=x onerror="document.body.dataset.pwned = \'img\'">')
HOSTILE_LABEL = 'Evil-VL-2B <b onmouseover="alert(1)">'
