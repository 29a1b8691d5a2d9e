# lit configuration for Cake: FileCheck tests over cakec's output.
import os
import lit.formats

config.name = 'cake'
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = ['.cake', '.test']
config.excludes = ['Inputs', 'lit.cfg.py', 'lit.site.cfg.py.in']
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.cake_build_dir, 'lit')
config.substitutions.append(('%cakec', os.path.join(config.cake_build_dir, 'bin', 'cakec')))
config.substitutions.append(('%specs', os.path.join(config.cake_source_dir, 'specs')))
config.environment['PATH'] = os.pathsep.join([config.llvm_tools_dir, config.environment.get('PATH', '')])
config.environment['CAKE_CUDA_ROOT'] = config.cuda_root
config.substitutions.append(('%cuda_root', config.cuda_root))

# A sanitizer build (CAKE_SANITIZE): the `sanitizer` feature, the trip program
# of tests/lit/sanitizer, and options that make every report abort (a signal,
# which `not` does not invert); options from the caller's environment come
# after these and win.
if getattr(config, 'cake_sanitize', False):
    config.available_features.add('sanitizer')
    config.substitutions.append(('%sanitizer_trip', os.path.join(config.cake_build_dir, 'bin', 'sanitizer_trip')))
    defaults = {
        'ASAN_OPTIONS': 'abort_on_error=1:halt_on_error=1:detect_leaks=1',
        'UBSAN_OPTIONS': 'halt_on_error=1:abort_on_error=1:print_stacktrace=1',
        'LSAN_OPTIONS': 'abort_on_error=1',
    }
    for k, v in defaults.items():
        given = os.environ.get(k, '')
        config.environment[k] = v + (':' + given if given else '')
    symbolizer = os.path.join(config.llvm_tools_dir, 'llvm-symbolizer')
    if os.path.exists(symbolizer) and 'ASAN_SYMBOLIZER_PATH' not in os.environ:
        config.environment['ASAN_SYMBOLIZER_PATH'] = symbolizer
