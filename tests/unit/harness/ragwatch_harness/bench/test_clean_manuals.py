"""The FAQ-and-manuals probe reads pages as a reader sees them: HTML without its scripts, POD
without its codes."""

from ragwatch_harness.bench.clean_manuals import html_text, info_text, pod_text


def test_html_keeps_preformatted_lines_and_drops_scripts_and_navigation():
    page = (
        "<html><head><title>t</title><script>var x = 612345678;</script></head><body><nav>Home | Next</nav>"
        "<h2>How do I parcel out work?</h2><p>Use the   <code>queue</code>\nmodule.</p>"
        "<pre>for i in range(5):\n    t.start()</pre><p>A &amp; B</p></body></html>"
    )
    text = html_text(page)
    assert "612345678" not in text and "Home | Next" not in text
    assert "How do I parcel out work?\n\nUse the queue module." in text
    assert "for i in range(5):\n    t.start()" in text
    assert text.endswith("A & B")


def test_pod_codes_become_their_text_and_commands_go():
    pod = "=head2 How do I sort a hash?\n\nUse C<sort> on B<C<keys %h>>.\n\n=over 4\n\n=item * fast\n\n=back\n\n=cut\n"
    text = pod_text(pod)
    assert "How do I sort a hash?" in text and "Use sort on keys %h." in text and "* fast" in text
    assert "=over" not in text and "C<" not in text


def test_info_nodes_lose_their_navigation_lines():
    source = "\x1f\nFile: grep.info,  Node: Usage,  Next: Performance\n\n3 Usage\n*******\n\nHere is an example.\n"
    text = info_text(source)
    assert "File: grep.info" not in text and "Here is an example." in text
