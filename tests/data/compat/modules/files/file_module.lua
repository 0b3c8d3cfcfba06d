-- syslua.modules.file.setup in its three shapes: content (immutable, the
-- default), content marked mutable, and a source file beside this one.
-- Planned only: the targets are outside the test's home.
local file = require('syslua').modules.file

file.setup({ target = '/opt/widget/etc/widget.conf', content = 'threads=4\n' })

file.setup({ target = '/var/opt/widget/state.txt', content = 'counter=0\n', mutable = true })

file.setup({ target = '/opt/widget/share/motd.txt', source = './motd.txt' })
