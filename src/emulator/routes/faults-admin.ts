import type { FastifyInstance } from 'fastify';
import { parseBody } from '../errors.ts';
import { type Faults, faultPatchSchema } from '../faults.ts';

/**
 * GET and POST /_preble/faults: read or change the fault settings at run time (tests flip them
 * without a restart). Registered only with --fault-admin.
 */
export function faultAdminRoutes(app: FastifyInstance, faults: Faults): void {
  app.get('/_preble/faults', () => faults.report());
  app.post('/_preble/faults', (request) => {
    faults.update(parseBody(faultPatchSchema, request.body));
    return faults.report();
  });
}
