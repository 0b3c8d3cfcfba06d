-- An input in the `{ git = URL, ref = BRANCH }` form, handed to a build that
-- copies a file out of the checkout. The test redirects the URL to a local
-- repository; the commit it resolves is pinned in syslua.lock.
return {
  inputs = {
    notes = { git = 'https://github.com/syslua-tests/pocket-notes.git', ref = 'trunk' },
  },
  setup = function(inputs)
    sys.build({
      id = 'notes-copy',
      inputs = { notes = inputs.notes },
      create = function(build_inputs, ctx)
        ctx:exec({ bin = '/bin/cp', args = { build_inputs.notes.path .. '/TODO.md', ctx.out .. '/TODO.md' } })
        return { todo = ctx.out .. '/TODO.md' }
      end,
    })
  end,
}
