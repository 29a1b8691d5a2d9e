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
